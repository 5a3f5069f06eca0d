"""The agent suite with its conversations' simulated user played by a live
model instead of a script: copies scenarios/agent into SUITE and writes
USER_FILE, a model file named NAME for the server of MODEL_FILE.
Usage: agent_suite.py SUITE MODEL_FILE NAME USER_FILE"""

import json
import pathlib
import shutil
import sys


def main():
    suite, model_file, name, user_file = sys.argv[1:5]
    suite = pathlib.Path(suite)
    shutil.rmtree(suite, ignore_errors=True)
    shutil.copytree("scenarios/agent", suite)
    for path in sorted(suite.glob("*.json")):
        scenario = json.loads(path.read_text())
        user = scenario.get("task", {}).get("user")
        if user and "script" in user:
            del user["script"]
            user["model"] = name
            path.write_text(json.dumps(scenario, indent=2))
    user = json.loads(pathlib.Path(model_file).read_text())
    user["name"] = name
    user.pop("feedback", None)
    pathlib.Path(user_file).write_text(json.dumps(user, indent=2))


if __name__ == "__main__":
    main()
