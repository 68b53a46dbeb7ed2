"""nodefleet's CrossGuard rules. Only ``policies/__main__.py`` builds the PolicyPack (it never returns)."""
