# Reference program for place_unseen_in_bowl (one contact per cell). INSTRUCTION is the task's
# instruction, as a model copies it into its program.
# %% read what goes where, look, then grasp the object
import re

import numpy as np

colour, noun, bowl_colour = re.search(
    r'put the (\w+) (\w+) into the (\w+) bowl', INSTRUCTION, re.IGNORECASE
).groups()
found = locate(colour)
# The one of that colour called so; else the biggest (its shape may have been measured as
# another; a shaded patch of table of the same colour measures flat). The bowl has another
# colour.
target = max(found, key=lambda o: (noun in o.label, float(np.prod(o.size))))
bowl = locate(f'biggest {bowl_colour} bowl')[0]
print('wanted the', colour, noun, 'in the', bowl_colour, 'bowl; found', target, bowl)
pick(target, toward=bowl)
# %% put it into the bowl, go home, check
place(into=bowl)
home()
target = locate(f'biggest {colour}')[0]
print('the', colour, noun, 'now at', target.position.round(3), 'bowl at', bowl.position.round(3))
# %% finish
finish(f'the {colour} {noun} is in the {bowl_colour} bowl')
