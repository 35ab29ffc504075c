#!/bin/bash
# fixture for the guard tests: read, never run. A build clean: objects listed into a file, then removed.
set -eu
find . -name '*.o' > objs.txt
xargs rm -f < objs.txt
while IFS= read -r f; do rm -f -- "$f"; done < objs.txt
