"""Reading replies: the action format, the reply parser and the finding matcher.

Shared by the agent's episode loop, the models that write replies (trivial policies, the
classical reader) and every protocol's reply reader, so it sits below all of them.
"""
