import Syncproof.Syntax
import Syncproof.Semantics
import Syncproof.Bisim
import Syncproof.Check
