"""The package version (its own module, so that learners can read it without importing the
package root)."""

__version__ = "0.1.0"
