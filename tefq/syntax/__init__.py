"""The front end's first step: .tef text -> syntax tree (`tefq.syntax.ast`)."""
from tefq.syntax.parser import build_parser, grammar_text, parse

__all__ = ["parse", "build_parser", "grammar_text"]
