"""`python -m triage.diagnose.principles` prints the table docs/principles.md holds."""

from triage.diagnose.principles import markdown_table

print(markdown_table(), end="")
