"""Kinds written for other kind API versions, for the tests of engine/kind_api.py: `too_old`
and `too_new` (named by GPUDECK_KIND_MODULES) are refused at registration; the package
`gpudeck-kind-oldreg` is a third-party kind written for version 1, installed with pip."""
