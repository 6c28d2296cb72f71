"""Lost Cities players: fixed bots, determinized search, head-to-head evaluation, players by name and
the shipped agents."""
