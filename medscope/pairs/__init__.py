"""Building paired-modality sets (paired-modality paper §3.3): candidate photographs from an image model,
human review (approve / reject / retry with feedback), and a manifest of approved photographs
with their prompts, seeds and review history; plus the embedded generated set."""
