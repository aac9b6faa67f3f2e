"""The analyses people open a trace for, each on roofline points where it makes sense.

One module per analysis, each a typed result from the shared :class:`~.timeline.Timeline` (the kernels by
stream, joined to their launch calls and to their ops' roofline points, built once per trace):
idle time (:mod:`.idle`), the kernel breakdown (:mod:`.kernels`), compute/communication overlap
(:mod:`.overlap`), launch delay (:mod:`.launch`), the critical path of a step (:mod:`.critical`), the memory
timeline (:mod:`.memory`); :mod:`.suite` runs the ones asked for, :mod:`.diff` compares two traces.
"""
