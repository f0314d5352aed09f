from glob import glob

from setuptools import find_packages, setup

package_name = 'harness_bringup'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['fastdds_profile.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.py')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Harness developers',
    maintainer_email='harness@example.com',
    description='Composes the node graph: domains, processes, launch files, the harness command.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': ['harness = harness_bringup.cli:main']},
)
