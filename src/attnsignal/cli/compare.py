"""``attnsignal compare``: saved runs overlaid in one figure, with a table of their
configurations."""
