"""The model of the work: the cost formulas (FLOPs and bytes per op), Op and the column vocabulary,
the workload's typed metadata, and the column-wise Workload.

Modules: costs, workload_columns, workload_facts, workload. The package imports none of them: import each by its full name."""
