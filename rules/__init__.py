"""scriptdiff's rule packs (YAML). This folder is shipped as the package scriptdiff.rulepacks."""
