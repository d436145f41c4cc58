"""fathom-rlm: recursive-language-model environment over long synthetic documents."""
