"""nodefleet: pure domain code (models, versions, catalogs, skew, manifest rendering); no Pulumi imports."""
