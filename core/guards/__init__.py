"""Guards that slow the user down only where speed is dangerous: secrets, sensitive paths,
accepts faster than anyone can read."""
