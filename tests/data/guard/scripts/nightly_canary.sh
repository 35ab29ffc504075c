#!/bin/bash
# fixture for the guard tests: read, never run (a canary: mkfs of a device that does not exist)
mkfs.ext4 /dev/fd-does-not-exist
