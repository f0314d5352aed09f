from setuptools import find_packages, setup

package_name = 'harness_recording'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['templates/*.j2']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Harness developers',
    maintainer_email='harness@example.com',
    description='Run folders, ticks, bags, replay, reports, bench tables and LeRobot datasets.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': ['recorder = harness_recording.recorder_node:main']},
)
