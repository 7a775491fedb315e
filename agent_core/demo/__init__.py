"""The offline demo: a bundled project folder and scripted runs that end in each way a run
can end. `workbench demo` records them; tests check the statuses they record."""

from agent_core.demo.project import write_project
from agent_core.demo.scenarios import FORK_STEPS, SCENARIOS, Scenario, write_fork_script

__all__ = ["FORK_STEPS", "SCENARIOS", "Scenario", "write_fork_script", "write_project"]
