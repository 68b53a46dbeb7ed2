"""Imported by :mod:`cli.forkrun`'s fork server only, after its preloads: reads once what every forked stack's
``check``, ``render`` and ``forecast`` would otherwise read again, identically, for itself.

That is the index of the shipped CRDs (:func:`nodefleet.apiserver.store.load_index`, cached per process), which
the policy pack judges every custom resource against: about 0.1 s of CPU per hosted stack. Each forked stack
gets its own copy, as it gets its own copy of every preloaded module. A CRD folder that cannot be read is left
to the stack's own run, which says why.
"""

from __future__ import annotations

import contextlib

from nodefleet.apiserver.store import CrdError, load_index

with contextlib.suppress(CrdError):
    load_index()
