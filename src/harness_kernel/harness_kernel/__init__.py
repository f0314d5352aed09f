"""Program execution: the program API, isolation and the kernel node."""
