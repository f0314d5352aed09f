"""The ARX X5 dual-arm station: embodiment numbers, URDF and the MuJoCo model built from it."""
