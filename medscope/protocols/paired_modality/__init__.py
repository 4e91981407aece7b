"""The paired-modality paper's paired-modality evaluation ("Trick-or-Treat"): one radiograph, a matched and a
mismatched photograph of the same person; hallucinated (FP) and missed (FN) clinically
significant photo findings, photo only vs photo + radiograph, by extract-then-judge."""

from medscope.protocols.paired_modality.protocol import PairedModalityProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
