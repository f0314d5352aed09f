from setuptools import find_packages, setup

package_name = 'harness_operator'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Harness developers',
    maintainer_email='harness@example.com',
    description='The agent operator: `harness mcp`, an MCP server over a live station with '
    'two-field results, idempotent dispatch, budgets and tickets, and a run journal.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': []},
)
