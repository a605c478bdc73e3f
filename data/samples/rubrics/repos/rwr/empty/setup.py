from setuptools import setup
setup(name='gridworld', version='0.0.1')
