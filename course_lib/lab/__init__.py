"""What the lessons run on: the models they train, the training loop, the synthetic tasks, the induction
experiment, the baselines, the attention explorer, plots and widgets. A learner reads the concept modules one
level up; this room is the lab bench they stand on."""
