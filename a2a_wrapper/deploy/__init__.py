"""The fleet's configs rendered for other platforms: `a2a-wrap deploy kubernetes` (manifests.py) writes plain
Kubernetes manifests and a kustomization. Nothing is imported here, so that the CLI's options stay cheap."""
