# The conversation, below the model and the engine: what a model is given (the Context: items,
# its rendered tokens, its safety scan, the route; the tokenizer) and what it may ask for (the
# call specs), with the ids and the work accounting both sides share.
