"""The shield: five pure checks on every joint command; forward kinematics is injected."""
