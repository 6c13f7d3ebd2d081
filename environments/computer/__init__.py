"""The computer-use domain: an Xvfb desktop per rollout (window manager + Debian apps),
its action layer (xdotool mouse/keyboard, bash, str_replace_editor) and procedural task
families whose oracles drive the same action layer. The harness lives in
``environments.harnesses.computer_use``."""
