"""The run store's core: what every backend of ``RunStore`` shares, none of it
talking to a store.

A backend (``agui_wire.redis``, ``agui_wire.memory``) imports this package; this
package imports no backend, and no backend imports another. The modules, one
job each, each importing only those before it: ``ids`` (run ids, owners,
generations, event ids and positions, the ``RUN_ERROR`` codes), ``observe``
(what a store records: OpenTelemetry's counters, histograms and spans of its
runs, readers, appends, faults and drains), ``options``
(the options every backend takes, checked), ``ends`` (the end reasons and the
``RUN_ERROR`` events a store writes), ``batches`` (stored events as the batches
every local reader of a run shares, and compact prefixes), ``pacing`` (a
background job's share of the event loop), ``folds`` (compact prefixes folded
page by page, shared by a run's joiners, paced), ``read`` (one reader's
view of a run: checked, replayed, tailed; what a backend gives it), ``appends``
(events admitted as payloads and batched into appends), ``produce`` (a claimed
run produced; what a backend does for it), ``http`` (a run as an HTTP response:
statuses, headers, the store's faults as ``RUN_ERROR`` events), ``store``
(``RunStore``'s public methods, the same on every backend).
"""
