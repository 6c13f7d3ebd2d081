"""Example claw tasks (the task dirs beside this file) and the code that writes them."""
