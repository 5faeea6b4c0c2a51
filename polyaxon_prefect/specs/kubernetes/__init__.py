"""The Kubernetes objects a Polyaxonfile embeds, as generated strict models."""
