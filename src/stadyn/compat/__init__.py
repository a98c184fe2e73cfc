"""Name shims so CNTK and NNabla programs run on Stadyn with only their imports changed.

Compat packages rename and adapt arguments; behaviour lives in the native modules.
"""
