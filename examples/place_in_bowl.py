# harness program place_in_bowl examples/place_in_bowl.py
block = locate('green block')[0]
bowl = locate('bowl')[0]
pick(block)
place(into=bowl)
home()
print('block now at', locate('green block')[0].position.round(3))
