//! nandlab core
