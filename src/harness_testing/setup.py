from setuptools import find_packages, setup

package_name = 'harness_testing'

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
    description='Scenes staged by hand and scripted motions for tests and measurements.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
)
