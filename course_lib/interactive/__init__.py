"""The learner's own tools: the self-check quizzes, the prediction checkpoints, the spaced review and the
learning record that keeps a learner's answers."""
