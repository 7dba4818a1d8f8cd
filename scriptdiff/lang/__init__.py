"""Input languages: each module turns one file's bytes into facts (and, for code, a
normalized form to compare structurally). See engine.LANGS for the registry."""
