"""Code this environment shares with its sibling, written once in the repository's `packages/`.

Each entry here is a symbolic link to that source; building a wheel or an sdist copies the files
in, so the installed environment depends on nothing that is not on the public package index.
Import it as `<environment>._vendor.<name>`, never by its bare name.
"""
