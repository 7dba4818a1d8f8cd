__version__ = "0.1.0"

# True in a process that ends with its command (the command line sets it; a worker forked from
# it inherits it): the cycle collector may then leave what a unit of work built to the end of
# the process (run/gcpause.py). A program that imports the library keeps it False.
COMMAND_PROCESS = False
