"""Self-play policy gradient for any ``lostcities.game.api.Game``: PPO with MMD's magnet, entropy over the
legal actions, a league and named opponents, a behaviour-cloning start, in one jitted update.

``config`` (the config tree and presets), ``network`` (the actor-critic), ``rollout`` (collection),
``gae``, ``ppo`` (the loss and one update), ``opponents``, ``learner`` (one jitted update and its
state), ``init`` (fresh, cloned or an agent's start), ``evaluate``, ``run`` (the run folder loop).
"""
