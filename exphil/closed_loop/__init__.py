"""Policies judged by playing the simulated drill: the closed-loop harness, the scripted teacher, drill
starts, the simulator's validation against replays, and the evaluation's metrics, report and plots.
Sits above ``exphil.sim`` (the simulator never imports it)."""
