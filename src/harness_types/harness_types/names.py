"""The ROS names of the node graph, in one place. Relative names resolve in the namespace
the graph is started in (`ros2 launch ... namespace:=station1` moves the whole graph); /tf,
/tf_static and /clock stay absolute, as tf2 and use_sim_time expect."""

from __future__ import annotations

# Nodes
WORKER = 'worker'
SKILL_SERVER = 'skill_server'
KERNEL = 'kernel'


def lane_node(owner: str, service: str) -> str:
    """The node of one service's own lane (harness_types.lanes) at `owner`'s end:
    kernel/reactive_step at both of its ends; the skill server serves skills/state, observe, ik
    and predict on lanes, the kernel calls them on lanes; the worker serves WORKER_LANES on
    lanes, the skill server calls them on lanes."""
    return f'{owner}_{service}'


SKILL_SERVER_REACTIVE = lane_node(SKILL_SERVER, 'reactive')
KERNEL_REACTIVE = lane_node(KERNEL, 'reactive')
DRIVER = 'driver'
RECORDER = 'recorder'

# The worker's services (driver and skill server only) and topics
WORKER_SERVICES = (
    'reset',
    'tick',
    'state',
    'observe',
    'fk',
    'ik',
    'plan',
    'outcome',
    'profile',
    'predict',  # the world model (its stand-in rolls a copy of the simulator forward)
)
# Those called every tick, or many times a skill (pick's IK scan): each on a lane of its own,
# not the worker's executor. Through the executor a tick took 2.1-2.3 ms between two processes,
# on lanes 1.0-1.1 ms (0.37 ms of it the tick itself; perf/worker.py).
WORKER_LANES = ('tick', 'state', 'fk', 'ik')


def worker_service(name: str) -> str:
    """e.g. 'worker/tick'."""
    if name not in WORKER_SERVICES:
        raise ValueError(f'the worker has no service {name!r}')
    return f'{WORKER}/{name}'


SHIELD_REJECTIONS = f'{WORKER}/shield_rejections'
JOINT_STATES = 'joint_states'
TF = '/tf'
TF_STATIC = '/tf_static'
CLOCK = '/clock'
ROBOT_DESCRIPTION = 'robot_description'


def camera_image(camera: str) -> str:
    return f'cameras/{camera}/image_raw'


def camera_info(camera: str) -> str:
    return f'cameras/{camera}/camera_info'


def camera_compressed(camera: str) -> str:
    """sensor_msgs/CompressedImage (JPEG) of image_raw, at the worker's compressed rate."""
    return f'cameras/{camera}/image_raw/compressed'


def camera_depth(camera: str) -> str:
    """32FC1 metres along the optical axis, registered to the colour image."""
    return f'cameras/{camera}/depth/image_raw'


def camera_segmentation(camera: str) -> str:
    """32SC1 instance indices (a simulator's; real cameras have none)."""
    return f'cameras/{camera}/segmentation'


def camera_labels(camera: str) -> str:
    """std_msgs/String, a JSON list: the label of each segmentation index (latched)."""
    return f'cameras/{camera}/labels'


# The ros2_control side (config/controllers.yaml of arx_x5_description)
CONTROLLER_COMMANDS = 'station_position_controller/commands'
STANDIN = 'ros2_control_standin'


# The skill server: one action per skill, and what programs read about the robot
SKILL_STATE = 'skills/state'
SKILL_OBSERVE = 'skills/observe'
SKILL_ESTOP = 'skills/estop'  # harness_msgs/Estop: engage or release the emergency stop
SKILL_IK = 'skills/ik'
SKILL_PREDICT = 'skills/predict'


def skill_action(name: str) -> str:
    return f'skills/{name}'


# std_msgs/String, JSON: each execution's start and end (the skill server's)
EXECUTIONS = 'skills/executions'


# The kernel and the driver
RUN_CELL = f'{KERNEL}/run_cell'
REACTIVE_STEP = f'{KERNEL}/reactive_step'
VERIFY = f'{DRIVER}/verify'
EVENTS = 'harness/events'
MARKERS = 'harness/markers'  # visualization_msgs/MarkerArray (harness_types.markers)
# sensor_msgs/CompressedImage (PNG): each image the model was sent, frame_id its file in the
# run folder (images/NNN-callCC.png)
MODEL_IMAGES = 'harness/model_images'


# How many messages of a per-tick topic the recorder records (/joint_states, /tf, /clock) its
# publisher keeps and the recorder queues: reliable delivery is only as deep as the shallower
# side, and a fast episode ticks every ~3 ms, so a recorder that a loaded machine holds back for
# longer than this many ticks loses messages.
RECORDED_DEPTH = 500
