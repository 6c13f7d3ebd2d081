"""OpenForge core: the version and the typed settings every room reads.

The rooms of the house (``storage``, ``environments``, ``training``, ``synthesis``,
``tasks``, ``flows``) are top-level packages, as the design card lays them out; this small
package sits beneath all of them and owns only settings and logging set-up.
"""

__version__ = "0.1.0"
