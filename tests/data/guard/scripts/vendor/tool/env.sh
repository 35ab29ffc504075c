export TOOL_HOME=$PWD
