"""The fleet as one thing: the registry of management clusters every stack refers to, the plan of a release
moving through the waves, and the state of that upgrade as it goes, so a crash or a resume never merges,
repeats or skips a step.

It sits beside `drift`, at the top of the domain package: it may import `render`, `stackfile`, `bootimages`,
`apiserver` and the root vocabulary, but not `drift` (nor `drift` it), and nothing below imports it. Like the
rest of the package it does no I/O beyond reading the files a user names: git, processes and API servers stay
in `cli/`.
"""
