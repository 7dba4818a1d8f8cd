"""One module per subcommand: `add_arguments(parser)` and `run(args) -> int`.
Nothing heavy at module level: these are imported to build --help."""
