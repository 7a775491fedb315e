"""Claude Code and Codex CLI run headless, as docs/capture.md tells a user to run them: a
fresh config folder, the base URL at a local server, their vendor traffic off.

The CLIs come from `scripts/install-coding-agents.sh` (node_modules/.coding-agents/), or from
$WORKBENCH_CLAUDE / $WORKBENCH_CODEX. Each run starts from an empty config folder at the same
path, so a replay sends what the capture sent (both write the folder into their prompts).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
BIN = ROOT / "node_modules" / ".coding-agents" / "node_modules" / ".bin"
INSTALL = "run `bash scripts/install-coding-agents.sh` (docs/testing.md)"
ANTHROPIC_KEY = "sk-ant-api03-coding-agent-test-0123456789"
OPENAI_KEY = "sk-coding-agent-test-0123456789abcdef"
NOTES = "The release is on Friday.\n"
TASK = "What do the notes in notes.txt say?"
ANSWER = "The notes say the release is on Friday."
CLAUDE_MODEL = "claude-sonnet-4-5"
# A model Codex knows: it then offers its full tool set, the freeform apply_patch included.
CODEX_MODEL = "gpt-5.5"


def cli(name: str) -> Path | None:
    configured = os.environ.get(f"WORKBENCH_{name.upper()}")
    path = Path(configured) if configured else BIN / name
    return path if path.exists() else None


def _minimal_env(**extra: str) -> dict[str, str]:
    # Nothing of the machine's environment: no real key, no proxy settings, no config.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **extra}


@dataclass
class Workspace:
    """The project folder an agent works in and the config folders it is given."""

    root: Path

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def fresh(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        (self.home / ".claude").mkdir(parents=True)
        (self.home / ".codex").mkdir(parents=True)
        self.project.mkdir(parents=True, exist_ok=True)
        (self.project / "notes.txt").write_text(NOTES, encoding="utf-8")

    def sessions(self, dest: Path) -> Path:
        """Keep the session files the last run wrote (the next `fresh()` removes them)."""
        shutil.copytree(self.home, dest, dirs_exist_ok=True)
        return dest


def run_claude(claude: Path, workspace: Workspace, base_url: str, *, persist: bool) -> str:
    """`claude -p TASK`; its printed answer. `base_url` without `/v1`."""
    workspace.fresh()
    argv = [str(claude), "-p", TASK, "--output-format", "text", "--model", CLAUDE_MODEL]
    argv += ["--allowedTools", "Read,Bash"]
    if not persist:
        argv.append("--no-session-persistence")
    env = _minimal_env(
        HOME=str(workspace.home),
        CLAUDE_CONFIG_DIR=str(workspace.home / ".claude"),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    done = subprocess.run(
        argv, cwd=workspace.project, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"claude exited {done.returncode}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


CODEX_CONFIG = """\
model = "{model}"
model_provider = "workbench"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false

[model_providers.workbench]
name = "workbench"
base_url = "{base_url}"
wire_api = "responses"
env_key = "WORKBENCH_CODEX_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


def run_codex(codex: Path, workspace: Workspace, base_url: str, *, persist: bool) -> str:
    """`codex exec TASK`; its last message. `base_url` with `/v1`."""
    workspace.fresh()
    codex_home = workspace.home / ".codex"
    config = CODEX_CONFIG.format(model=CODEX_MODEL, base_url=base_url)
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    last = workspace.root / "last-message.txt"
    argv = [str(codex), "exec", "--skip-git-repo-check", "-C", str(workspace.project)]
    argv += ["--output-last-message", str(last)]
    if not persist:
        argv.append("--ephemeral")
    env = _minimal_env(
        HOME=str(workspace.home), CODEX_HOME=str(codex_home), WORKBENCH_CODEX_KEY=OPENAI_KEY
    )
    done = subprocess.run(
        [*argv, TASK], cwd=workspace.project, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"codex exited {done.returncode}: {done.stdout}{done.stderr}"
    return last.read_text(encoding="utf-8").strip()
