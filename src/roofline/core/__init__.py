"""The foundation every layer stands on: errors and their one-line rule, units, precision names, name
matching, checked file reading and atomic writing, stated limits, the roofline formula itself, statistics,
argument checks, text escaping, the version and the display registry.

Modules: text, version, formatters, errors, units, precision, names, fileio, limits, formula, stats, arguments. The package imports none of them: import each by its full name."""
