from setuptools import setup
setup(name="tool")
