"""The words and advice a person reads: the summary facts, the LLM report, levers with computed
effects, and the device comparison.

Modules: summary, llm_report, advice, comparison. The package imports none of them: import each by its full name."""
