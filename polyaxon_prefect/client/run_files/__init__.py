"""What a run left on this machine (``artifacts``, ``invalidate``): where its directory is, its
files listed and copied, and the op cache's records that point to it.
"""
