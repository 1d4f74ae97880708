"""One-off measurements behind a decision or an entry of docs/experiments.md, each run as
`python -m benchmarks.studies.NAME` (its docstring says what it measures); the standing benchmarks are beside this
package, in `benchmarks/`."""
