#!/bin/sh
echo installing
cp tool ~/.local/bin/
