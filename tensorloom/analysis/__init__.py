"""Static analyses of checked IR: `tlc info`'s model profile and training-memory budget.

from tensorloom.analysis.profile import ProfileOptions, profile_file
from tensorloom.analysis.memory import Training, training_budget
"""
